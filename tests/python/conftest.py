"""What every Python test shares: the ragbox binary, its environment, and a
small Cortext workspace."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RAGBOX = os.environ.get("RAGBOX_BIN", str(ROOT / "target" / "debug" / "ragbox"))


def ragbox_env(ws, log="warn"):
    """The environment `ragbox` runs in for workspace `ws`: no user tools, the
    tests' compile cache and packed models, and the model where the Makefile fetched it."""
    assert pathlib.Path(RAGBOX).exists(), f"{RAGBOX} not built: run `cargo build -p ragbox` (make test does)"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", ""),
        "RAGBOX_CONFIG_DIR": str(ws.parent / "user-config"),
        "RAGBOX_COMPILE_CACHE": str(ROOT / "target" / "test-compile-cache"),
        "RAGBOX_PACKED_CACHE": str(ROOT / "target" / "test-packed-models"),
        "RAGBOX_EMBEDDING_CACHE": str(ws.parent / "embedding-cache"),
        "RAGBOX_LOG": log,
        # A stdio `serve` hands its client to the user's service: this test's own, gone soon after.
        "RAGBOX_SERVICE_DIR": str(ws.parent / "run"),
        "RAGBOX_SERVICE_LINGER": "2",
    }
    for var in ("XDG_CACHE_HOME", "RAGBOX_MODEL"):
        if var in os.environ:
            env[var] = os.environ[var]
    return env


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    files = {
        "brainstorm/2025-11-17/001-auth-ideas/conversation.md": "# Auth ideas\n\nWe compared JWT tokens with server sessions.\n",
        "debug/2025-10-02/002-token-leak/conversation.md": "# Token leak\n\nFix: redact jwt fields before logging.\n",
        "notes/todo.md": "Nothing about tokens here.\n",
        ".gitignore": "private/\n",
        "private/secret.md": "JWT secret\n",
    }
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "user-config").mkdir()
    return ws
