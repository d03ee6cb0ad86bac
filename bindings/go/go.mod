module github.com/libthp/libthp/bindings/go

go 1.19
