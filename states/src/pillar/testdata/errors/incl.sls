include: [ghost]
incl: 1
