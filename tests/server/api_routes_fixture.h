// The fixture of the API route tests (api_routes_test.cpp, api_flows_routes_test.cpp): a
// served test project (server_fixture.h) and a helper to insert a record over the API.
#pragma once

#include <string>

#include "tests/server/server_fixture.h"

namespace flowrt::testing_http {

class ApiRoutesTest : public ServerFixture {
 protected:
  void SetUp() override { serve(); }
  std::string insert(const std::string& table, const std::string& values) {
    HttpReply r = client().post("/api/tables/" + table + "/records", values);
    EXPECT_EQ(r.status, 201) << r.body;
    return std::string(r.json()["sys_id"].as_string());
  }
};

}  // namespace flowrt::testing_http
