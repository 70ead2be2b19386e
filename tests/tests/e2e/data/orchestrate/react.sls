# A reaction (the master's `reactor:`) starting an orchestration with the event in its pillar.
deploy:
  runner.state.orchestrate:
    - args:
      - mods: orch.react
      - pillar:
          event_tag: {{ tag }}
          who: {{ data['who'] }}
