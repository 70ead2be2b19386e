# Started by the reactor (data/orchestrate/react.sls); not part of Salt's recording.
greet:
  salt.function:
    - name: test.echo
    - tgt: web1
    - arg:
      - {{ pillar['event_tag'] }} by {{ pillar['who'] }}
