port: {{ port }}
sls: {{ sls }}
tpldir: {{ tpldir }}
slspath: '{{ slspath }}'
tplfile: {{ tplfile }}
saltenv: {{ saltenv }}
pillarenv: {{ pillarenv is defined }}
opts_id: {{ opts.id }}
