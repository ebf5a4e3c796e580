"""What the tests share: toys, rank runners, fault hooks, launch helpers."""
