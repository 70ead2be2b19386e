orch_msg: hello from the master's pillar
