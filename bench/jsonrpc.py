"""A `ragbox serve` driven over stdio with raw JSON-RPC lines (standard
library only, so that scripts run before any venv exists can use it)."""

import json
import subprocess
import time
from pathlib import Path


class Server:
    """`ragbox serve ARGS` in `ws` (its log in `log`), initialized, over raw JSON-RPC lines."""

    def __init__(self, binary: str, ws: Path, log: Path, env: dict, args=("serve", "--watch"), name="bench"):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([binary, *args], cwd=ws, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, env=env)
        self.next_id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": name, "version": "1"}})
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.proc.stdin.flush()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def rpc(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def tool(self, name, arguments):
        started = time.perf_counter()
        reply = self.rpc("tools/call", {"name": name, "arguments": arguments})
        ms = (time.perf_counter() - started) * 1e3
        result = reply.get("result", {})
        if "error" in reply or result.get("isError"):
            return None, ms
        return result.get("structuredContent"), ms

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)
