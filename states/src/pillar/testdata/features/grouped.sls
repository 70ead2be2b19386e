grouped: yes
