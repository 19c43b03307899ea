pytest_plugins = ["rlstack_testing.pytest_plugin"]
