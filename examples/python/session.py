#!/usr/bin/env python3
"""A roz session from Python over gRPC: one client tool, which needs the user's approval.

It makes (or reuses) the environment "python-example", whose rule asks before `read_file`
runs, starts a session there offering `read_file`, sends one message, answers the approval
(yes, or no with --deny) and the tool call, prints the answer, and half-closes the stream,
which ends the session.

Needs grpcio and grpcio-tools (Debian: apt-get install python3-grpcio python3-grpc-tools;
else pip install grpcio grpcio-tools). The stubs are generated from proto/ at each run, into
a temporary folder. Settings: ROZ_URL (default http://127.0.0.1:8080) and ROZ_KEY.

    python3 examples/python/session.py [--deny] [MESSAGE]

Without MESSAGE it sends an inline script for the offline scripted model (the server's
default without a provider) that calls read_file on README.md; with a real model, say what
to read.
"""
import importlib.metadata
import json
import os
import pathlib
import queue
import re
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

PROTO = pathlib.Path(__file__).resolve().parents[2] / "proto"
URL = os.environ.get("ROZ_URL", "http://127.0.0.1:8080").rstrip("/")
KEY = os.environ.get("ROZ_KEY", "")
SCRIPT = {
    "responses": [
        [{"text": "Reading it. "}, {"tool_call": {"name": "read_file", "arguments": {"path": "README.md"}}}],
        {"ok": [{"text": "The file is read."}], "failed": [{"text": "I may not read the file."}]},
    ]
}


def load_stubs(out):
    """Generates roz/v1/agent_pb2*.py from proto/ into `out` and imports them."""
    import grpc_tools
    from grpc_tools import protoc

    source = PROTO
    # grpcio-tools before 1.36 (Debian 12 has 1.14) has a protoc without proto3 `optional`:
    # give it a copy without those labels (the wire format is the same).
    if tuple(int(n) for n in importlib.metadata.version("grpcio-tools").split(".")[:2]) < (1, 36):
        source = pathlib.Path(out, "proto")
        (source / "roz/v1").mkdir(parents=True)
        text = (PROTO / "roz/v1/agent.proto").read_text()
        (source / "roz/v1/agent.proto").write_text(re.sub(r"^(\s*)optional ", r"\1", text, flags=re.M))
    includes = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{source}", f"-I{includes}", f"--python_out={out}", f"--grpc_python_out={out}", str(source / "roz/v1/agent.proto")]
    if protoc.main(args) != 0:
        sys.exit("could not generate the stubs from proto/")
    sys.path.insert(0, out)
    from roz.v1 import agent_pb2, agent_pb2_grpc

    return agent_pb2, agent_pb2_grpc


def rest(method, path, body=None):
    """One REST call with the key; returns the parsed JSON answer."""
    headers = {"content-type": "application/json"} | ({"authorization": f"Bearer {KEY}"} if KEY else {})
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(urllib.request.Request(URL + path, data, headers, method=method)) as answer:
        return json.load(answer)


def environment_id():
    """The id of the environment "python-example" (made on first use): read_file needs a yes."""
    for env in rest("GET", "/v1/environments?limit=200")["items"]:
        if env["name"] == "python-example":
            return env["id"]
    rule = {"tool_pattern": "read_file", "policy": "require_confirmation", "reason": "reads a file on your machine"}
    return rest("POST", "/v1/environments", {"name": "python-example", "permissions": [rule]})["id"]


def read_file(path):
    """The client tool: the first line of a file under the current folder."""
    with open(path, encoding="utf-8") as f:
        return f.readline().strip()


class Printer:
    """Streamed text, then whole lines: a line starts on its own even right after text."""

    def __init__(self):
        self.mid_line = False

    def text(self, delta):
        print(delta, end="", flush=True)
        self.mid_line = not delta.endswith("\n")

    def line(self, text, file=sys.stdout):
        print(("\n" if self.mid_line else "") + text, file=file, flush=True)
        self.mid_line = False


def main():
    try:
        import grpc
        from google.protobuf import json_format, struct_pb2
    except ImportError as e:
        sys.exit(f"{e}: install grpcio and grpcio-tools (Debian: apt-get install python3-grpcio python3-grpc-tools)")

    out = Printer()
    deny = "--deny" in sys.argv[1:]
    words = [a for a in sys.argv[1:] if a != "--deny"]
    message = " ".join(words) if words else "script: " + json.dumps(SCRIPT)
    with tempfile.TemporaryDirectory() as folder:
        pb, rpc = load_stubs(folder)
        parameters = struct_pb2.Struct()
        parameters.update({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
        tool = pb.ToolSchema(name="read_file", description="Read the first line of a file", parameters_schema=parameters)
        requests = queue.Queue()
        requests.put(pb.SessionRequest(start=pb.StartSession(environment_id=environment_id(), tools=[tool])))
        requests.put(pb.SessionRequest(user_message=pb.UserMessage(content=message)))

        target = urllib.parse.urlsplit(URL)
        tls = target.scheme == "https"
        address = target.netloc if target.port else f"{target.hostname}:{443 if tls else 80}"
        channel = grpc.secure_channel(address, grpc.ssl_channel_credentials()) if tls else grpc.insecure_channel(address)
        metadata = [("authorization", f"Bearer {KEY}")] if KEY else []
        # The request stream: whatever the loop below puts in the queue; None half-closes it.
        outgoing = iter(requests.get, None)
        for response in rpc.AgentServiceStub(channel).StreamSession(outgoing, metadata=metadata):
            kind = response.WhichOneof("response")
            if kind == "session_started":
                out.line(f"session {response.session_started.session_id} started on {response.session_started.model}")
            elif kind == "activity_update" and response.activity_update.state == "waiting_approval":
                asked = response.activity_update.approval
                arguments = json.dumps(json_format.MessageToDict(asked.parameters))
                out.line(f"approval asked: {asked.tool_name}({arguments}), {asked.reason}: {'denied' if deny else 'approved'}")
                decision = pb.PermissionDecision(tool_call_id=asked.tool_call_id, approved=not deny)
                requests.put(pb.SessionRequest(permission_decision=decision))
            elif kind == "tool_request":
                call = response.tool_request
                arguments = json_format.MessageToDict(call.parameters)
                try:
                    result = pb.ToolResult(tool_call_id=call.tool_call_id, success=True, result=read_file(arguments["path"]))
                except (OSError, KeyError) as e:
                    result = pb.ToolResult(tool_call_id=call.tool_call_id, success=False, result=str(e))
                out.line(f"tool {call.tool_name}({json.dumps(arguments)}) -> {result.result!r}")
                requests.put(pb.SessionRequest(tool_result=result))
            elif kind == "text_delta":
                out.text(response.text_delta.content)
            elif kind == "error":
                out.line(f"error {response.error.code}: {response.error.message}", file=sys.stderr)
            elif kind == "turn_complete":
                done = response.turn_complete
                out.line(f"turn complete: {done.stop_reason}, {done.usage.input_tokens} in / {done.usage.output_tokens} out tokens")
                requests.put(None)
        channel.close()


if __name__ == "__main__":
    try:
        main()
    except urllib.error.URLError as e:
        sys.exit(f"{URL}: {e.reason}")
    except Exception as e:
        # A refused or broken call (grpc.RpcError): its status and message, not a traceback.
        if not hasattr(e, "code") or not hasattr(e, "details"):
            raise
        sys.exit(f"{URL}: {e.code().name}: {e.details()}")
