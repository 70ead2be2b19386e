web_config:
  test.succeed_with_changes:
    - name: config
