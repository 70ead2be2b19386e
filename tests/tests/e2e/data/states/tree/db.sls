db-nothing:
  test.nop
