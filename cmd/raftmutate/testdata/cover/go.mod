module example.com/cover

go 1.26
