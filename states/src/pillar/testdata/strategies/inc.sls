k:
  deep: {inc: 1, a: inc}
  list: [0]
inc_only: [x]
