"""The built-in demo agent: a pentest chain played turn by turn through the server's own gateway.

`script` (the campaigns and the agent loop), `transport` (how the agent reaches its model), `tools` (procedural
tool output), `upstream` (the scripted model on a loopback port).
"""
from flows.demo.script import DEMO_MAX_CAMPAIGNS, demo_create, demo_run, demo_start, gateway_turns
from flows.demo.transport import ModelTurns

__all__ = [
    "DEMO_MAX_CAMPAIGNS", "ModelTurns", "demo_create", "demo_run", "demo_start", "gateway_turns",
]
