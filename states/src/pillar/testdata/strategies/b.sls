k:
  deep: {a: 2}
  list: [2, 3]
top_a: 2
b: 1
