"""Upstream targets as the config builds them: an instance's own connection settings,
and every target prepared at load, so a bad endpoint or TLS file fails the load and
no request reads a TLS file on the event loop later."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from semproxy.config import schema as s
from semproxy.config.collect import Errors
from semproxy.errors import UpstreamError
from semproxy.transport.target import NetPolicy, Target, TlsFiles


def own_net(net: NetPolicy, proxy: str | None, tls: s.Tls | None) -> NetPolicy:
    """An instance's connection settings: the route's, with its own proxy and TLS files."""
    if proxy is None and tls is None:
        return net
    files = TlsFiles(ca_file=tls.ca_file, cert_file=tls.cert_file,
                     key_file=tls.key_file) if tls else None
    return replace(net, proxy=net.proxy if proxy is None else proxy, tls=files)


def check_targets(targets: Iterable[Target], path: str, errs: Errors) -> None:
    """Prepare every upstream request now: a bad endpoint or TLS file fails the load (one
    error per instance), and no request reads a TLS file on the event loop later."""
    for target in targets:
        if check_target(target, path, errs) is not None:
            return


def check_target(target: Target, path: str, errs: Errors) -> str | None:
    """Prepare the upstream request now, so a bad endpoint or TLS file fails the load."""
    if target.url.startswith(("http://", "https://")):
        try:
            target.call  # noqa: B018 (a cached property: computed here, once)
        except UpstreamError as exc:
            errs.add(path, exc.message)
            return exc.message
    return None
