base:
  db1:
    - app.db
  web1:
    - app.web
