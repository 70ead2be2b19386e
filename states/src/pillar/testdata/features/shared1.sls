{% do pillar.update({'seen': 'one'}) %}one: 1
