web_migrate:
  test.fail_without_changes:
    - name: migrate
    - comment: migration failed
