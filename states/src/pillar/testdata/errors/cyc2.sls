include: [cyc1]
cyc2: 1
