include:
  - lib
  - tpl:
      defaults: {port: 8080}
      key: 'svc:web'
z: 1
a: own
