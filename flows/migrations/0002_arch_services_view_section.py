"""Rename the model Section to ViewSection (the engine's AST node is `Section`); the table keeps its name."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("flows", "0003_nul_safe_json"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameModel(old_name="Section", new_name="ViewSection"),
                migrations.AlterModelTable(name="viewsection", table="flows_section"),
            ],
            database_operations=[],
        ),
    ]
