module example.com/strong

go 1.26
