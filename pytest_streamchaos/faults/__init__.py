"""What breaks: process faults, network faults, and the timeline that schedules them."""
