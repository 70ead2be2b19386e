a: {{ nope.x }}
