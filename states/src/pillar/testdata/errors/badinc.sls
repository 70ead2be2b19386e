include: notalist
badinc: 1
