"""What flows in: the rate-controlled generator and the ground-truth record of what was sent."""
