"""What flows out: the output collector and Spark progress / event capture."""
