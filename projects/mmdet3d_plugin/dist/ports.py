"""A free TCP port for a local rendezvous (MASTER_PORT, torchrun's
--master_port)."""
import socket


def free_port(host: str = '127.0.0.1') -> int:
    """Return a TCP port on ``host`` that nothing listens on right now.

    Args:
        host (str): Address to bind. Defaults to '127.0.0.1'.

    Returns:
        int: The port number.
    """
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
