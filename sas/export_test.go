package sas

// ParseIPRange is parseIPRange, for the tests of IPRange's bounds.
var ParseIPRange = parseIPRange
