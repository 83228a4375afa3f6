"""A throwaway certificate authority made with the openssl CLI: server and client certificates."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _run(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _issue(tmp: Path, name: str, ca: Path, ca_key: Path, ext: str) -> tuple[Path, Path]:
    key, csr, cert, extfile = (tmp / f"{name}.key", tmp / f"{name}.csr", tmp / f"{name}.pem",
                               tmp / f"{name}.ext")
    extfile.write_text(ext)
    _run("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
         "-keyout", str(key), "-out", str(csr))
    _run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", "1", "-extfile", str(extfile), "-out", str(cert))
    return cert, key


def make_pki(tmp: Path) -> Pki:
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is needed to make test certificates")
    ca, ca_key = tmp / "ca.pem", tmp / "ca.key"
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA",
         "-keyout", str(ca_key), "-out", str(ca))
    server = _issue(tmp, "server", ca, ca_key, "subjectAltName=IP:127.0.0.1\n")
    client = _issue(tmp, "client", ca, ca_key, "extendedKeyUsage=clientAuth\n")
    return Pki(ca, *server, *client)
