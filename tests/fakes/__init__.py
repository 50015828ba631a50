"""Fakes of memoryd's external services, for tests: real local servers, no call-shape mocks."""
