# Waits for web1 to announce itself on the bus, then runs a step on it; not part of Salt's
# recording (its comment holds the seconds waited).
wait_for_web1:
  salt.wait_for_event:
    - name: custom/ready
    - id_list:
      - web1
    - timeout: 30

after_ready:
  salt.function:
    - name: test.echo
    - tgt: web1
    - arg:
      - ready
    - require:
      - salt: wait_for_web1
