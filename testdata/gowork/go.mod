module gowork

go 1.18
