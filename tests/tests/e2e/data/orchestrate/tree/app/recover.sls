web_rollback:
  test.succeed_with_changes:
    - name: rollback
