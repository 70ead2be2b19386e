base:
  '*':
    - good
    - badyaml
    - badjinja
    - notdict
    - missing
    - incl
    - cyc1
    - badinc
