"""`kb-ai hooks ...`: installing kb-ai's hooks and MCP server into coding agents, the
model check, the capture status, and the prompt hint. The hook's own runtime, which
must start fast, is kb_ai/hooks/."""
