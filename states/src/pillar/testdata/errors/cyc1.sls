include: [cyc2]
cyc1: 1
