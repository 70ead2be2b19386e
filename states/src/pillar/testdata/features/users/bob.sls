users: {bob: 2}
