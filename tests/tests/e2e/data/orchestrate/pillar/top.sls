base:
  '*':
    - orch
