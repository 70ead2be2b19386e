two: {{ pillar.get('seen', 'nobody') }}
