"""The TLS settings every Anthropic client of the process shares."""

from __future__ import annotations

import functools
import ssl

import httpx2


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings of every client this process makes: the SDK's own default (its HTTP
    library's trusted roots, `SSL_CERT_FILE` and `SSL_CERT_DIR` honoured), made once. Loading
    the roots costs 30-40 ms of CPU, which the daemon paid at every heartbeat that called the
    model when each client made its own. A context is safe to share between clients and threads
    once made; nothing changes it afterwards."""
    return httpx2.create_ssl_context()
