-- wrk script for tests/e2e/test_services.c and `make bench`: requests alternate between
-- /report and /lookup, one each in turn on every connection.
local turn = 0

request = function()
	turn = turn + 1
	if turn % 2 == 0 then
		return wrk.format("GET", "/report")
	end
	return wrk.format("GET", "/lookup")
end
