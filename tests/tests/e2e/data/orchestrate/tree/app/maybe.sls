{% if grains['id'] == 'web1' %}
maybe:
  test.fail_without_changes:
    - name: flaky
{% else %}
maybe:
  test.succeed_without_changes:
    - name: flaky
{% endif %}
