"""Planning: desired specs + observed states -> a Plan of typed actions (pure), and its rendering."""
