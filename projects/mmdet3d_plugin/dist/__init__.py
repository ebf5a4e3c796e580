"""The distributed toolkit every part shares: side groups, free ports, the
seconds validator, declared long phases and the timeout budget."""
