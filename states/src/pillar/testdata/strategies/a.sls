include:
  - inc
k:
  deep: {a: 1, only_a: 1}
  list: [1, 2]
top_a: 1
