a: lib
b: lib
