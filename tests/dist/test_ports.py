"""dist.ports: ``free_port`` names a TCP port that a rendezvous can bind
and listen on right away (the probing socket is closed, not held)."""
import socket

import pytest

from projects.mmdet3d_plugin.dist.ports import free_port


@pytest.mark.parametrize('host', [None, '127.0.0.1', 'localhost'])
def test_the_port_can_be_bound_and_listened_on(host):
    port = free_port() if host is None else free_port(host)
    assert isinstance(port, int) and 1024 <= port <= 65535
    with socket.socket() as server:
        # EADDRINUSE if free_port still held it or something listens.
        server.bind((host or '127.0.0.1', port))
        server.listen()
        assert server.getsockname()[1] == port
