"""CSV for spreadsheet programs, shared by the course gradebook and the assessments' gradebooks."""


def csv_cell(value: str) -> str:
    """A cell starting with = + - @ is a formula to spreadsheet programs; a leading quote keeps a
    student's chosen name from running as one."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
