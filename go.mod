module github.com/certfn/certfn

go 1.26.0
