users: {alice: 1}
