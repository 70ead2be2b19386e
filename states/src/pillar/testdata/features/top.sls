base:
  '*':
    - common
    - users.*
    - shared1
    - shared2
  webs:
    - match: nodegroup
    - grouped
  'os_family:Debian':
    - match: grain
    - debian
