debian: {{ grains['os_family'] }}
