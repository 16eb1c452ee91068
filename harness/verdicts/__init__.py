"""What is judged and how it is said: the requirements catalog (`requirements`), outcomes and
the checks that produce them (`outcomes`), the expected-failures baseline (`baseline`), and
text from a host made safe to print (`safe_text`).

Imports nothing of the harness but its own modules (and the standard library and pytest).
"""
